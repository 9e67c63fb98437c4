from setuptools import find_packages, setup

package_name = 'maxim_eval'

setup(
    name=package_name,
    version='0.1.0',
    packages=find_packages(exclude=['test', 'test.*']),
    # The shipped scenarios (scenario/scenarios/*.yaml and robot/*.yaml) install beside the
    # runner that reads them from its own folder.
    package_data={package_name: ['**/*.yaml']},
    include_package_data=True,
    data_files=[
        ('share/ament_index/resource_index/packages', ['resource/' + package_name]),
        ('share/' + package_name, ['package.xml']),
    ],
    install_requires=['setuptools'],
    zip_safe=False,
    maintainer='Maxim developers',
    maintainer_email='dev@maxim-robot.org',
    description=('Evaluation: the scenario runner and simulation orchestrator with its shipped '
                 'scenarios, the robot world, and the idle soaks.'),
    license='Apache-2.0',
    tests_require=['pytest'],
)
