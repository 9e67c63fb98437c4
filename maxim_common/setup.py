from setuptools import find_packages, setup

package_name = 'maxim_common'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='Maxim developers',
    maintainer_email='dev@maxim-robot.org',
    description='Node lifetime, log throttle, QoS, health and diagnostics, conversions and '
                'error codes shared by every Maxim package.',
    license='Apache-2.0',
    tests_require=['pytest'],
)
